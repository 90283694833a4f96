"""A run made into a Trace: the Trace document, its build (engine, checks, picture), assembly, the compact codec,
trace files and their schema."""
