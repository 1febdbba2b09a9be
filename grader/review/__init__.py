"""Review: a person grades the answers the scorer was unsure of."""
