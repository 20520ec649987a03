"""Ask the class: the lecturer asks, the class answers from their phones, the projector shows the class beside the model."""
