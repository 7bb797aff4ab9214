"""Commands as process groups: spawning, running with a time limit, output and
logs, recorded groups, signals, and the sweep after a killed run.
"""
