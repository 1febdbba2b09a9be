"""What runs inside the sandbox, next to student code.

Modules here import only `grader.sandbox.wire`, `grader.sandbox.frames`,
`grader.sandbox.protocol`, `grader.errors` (plain classes) and each other (checked by tests/test_layers.py)."""
