"""AST mutants for the mutation adapter (DESIGN.md §11)."""
