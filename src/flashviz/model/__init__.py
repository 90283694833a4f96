"""Plain values and leaves: the launch config and its limits, tiling, units, precision, the float64 reference,
inputs, kernel files and their step regions."""
