"""Written answers: read answers.yaml, score each answer, measure the key."""
