"""Screens: what may enter the skill (answer leaks, the held-out firewall, duplicates, the
worked-example guard)."""
