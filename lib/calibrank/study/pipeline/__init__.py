"""The runs of a profile, outside the science: what the workflow runs, how long, and the page.

- :mod:`.grid`: the steps of a profile (notebook runs and the models they train), one list that
  ``workflow/Snakefile`` builds its rules from;
- :mod:`.train`: the training job of one model of the grid (``python -m calibrank.study.pipeline.train``);
- :mod:`.step`: one notebook step of the workflow (``python -m calibrank.study.pipeline.step``);
- :mod:`.launch`: one run of a profile's workflow at a time, and the recovery of a run that was killed
  (``make report`` and ``make nb-STEP`` run snakemake through it);
- :mod:`.schedule`: the steps as a schedule (pending, work, recorded rates) and the progress line after each
  step, torch-free;
- :mod:`.codekeys`: the key of the code each step reaches, the file per step that the workflow reads as its code
  input (``python -m calibrank.study.pipeline.codekeys``);
- :mod:`.eta`: how long ``make report`` will take, from the rates training and scoring record;
- :mod:`.report`: the report page that links every notebook's HTML.
"""
