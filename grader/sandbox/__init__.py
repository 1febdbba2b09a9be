"""The sandbox, host side: start the zygote, hand it work, read its answers."""
