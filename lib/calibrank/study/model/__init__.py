"""The rankers (notebook 03): a backbone, its training, the losses, the GP output layers.

- :mod:`.backbone`: the encoder and its pooling, loaded offline;
- :mod:`.cross_encoder`: the pointwise cross-encoder every ranker trains (encoder, dropout, head);
- :mod:`.training`: fine-tuning and scoring of (context, response) pairs, the weights on disk;
- :mod:`.encode_once`: scoring and training with no joint layer, each distinct context and response encoded once;
- :mod:`.dropout_masks`: MC Dropout's per-query masks, on pairs or on sides encoded once;
- :mod:`.losses`: binary cross-entropy and focal loss;
- :mod:`.experiment`: one ranker trained on one corpus and predicted on every condition;
- ``rankers/``: one class per method of the papers (:mod:`calibrank.study.model.rankers`);
- ``gp/``: spectral normalisation, the random-feature GP and the Pólya-Gamma GP layer.
"""
