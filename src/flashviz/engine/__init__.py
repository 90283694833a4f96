"""The engine: a memory model and one executor per algorithm, mirroring its kernel's loops."""
