"""p4cc experiments: one definition per reproduced figure, and the runner."""
