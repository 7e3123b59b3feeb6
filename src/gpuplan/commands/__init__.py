"""The CLI faces: one module per command, each exposing ``command()`` that builds its click
command from a job schema (gpuplan.commands.build). Modules import only click at import time;
the work happens inside the command. dataclass_code keeps the compiled dataclass methods the CLI
loads at start-up (record_dataclass_code regenerates them)."""
