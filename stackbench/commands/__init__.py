"""The commands behind `stackbench …`: measure.py (run, resume, scenario run),
inspect.py (show, runs, stacks, timeline, explain, compare, export), scenario.py
(scenario list / show). cli.py parses arguments and maps errors to exit statuses."""
