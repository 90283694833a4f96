"""The `flashviz` command: its subcommands, shared options, terminal output."""
