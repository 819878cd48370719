"""A snake game, built by the GraphLemon DevLoop."""
