"""A profile's settings, checked where they are built; every layer below reads them, torch-free.

- :mod:`.config`: :func:`~.config.load_config` reads a profile into its sections; run names;
  the command line the workflow asks;
- :mod:`.profiles`: the YAML files as written (file:line errors, ``extends`` merging);
- :mod:`.schema`: the sections, their defaults and bounds;
- :mod:`.gp`: the GP output layers' defaults and ranges, which the layers (:mod:`calibrank.study.model.gp`) and the
  profile's ranker sections both read;
- :mod:`.checks`: the rules of one setting, for profiles and layers alike;
- :mod:`.choices`: every option's choices;
- :mod:`.registry`: what each ranker is (name, family, shared model, S, whose claims).
"""
