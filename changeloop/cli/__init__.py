"""Command-line interface: ``main.py`` wires one module per verb."""
