// placeholder: filled in by the core helper
