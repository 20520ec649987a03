"""Ask the class: the lecturer asks, the class answers from their phones, and the projector shows the class's
answers beside the model's."""
