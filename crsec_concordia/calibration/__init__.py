"""What a model gets right and wrong on each venue's labelled judgements."""
