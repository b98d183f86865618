"""Code a third party would write, kept outside the package: a store backend of its own."""
