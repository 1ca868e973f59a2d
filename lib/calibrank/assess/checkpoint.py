def score_checkpoint(*a, **k):
    raise NotImplementedError
