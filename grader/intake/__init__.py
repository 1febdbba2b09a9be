"""Intake: find submissions and read their files, which are hostile input."""
