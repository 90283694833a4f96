"""The engine every algorithm's executor runs on: the memory model (HBM with per-element counters, SRAM with a
byte budget) and the recorder of steps. The executors themselves are in the algorithms' folders."""
