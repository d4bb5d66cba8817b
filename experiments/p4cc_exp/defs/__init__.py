"""One module per reproduced figure."""
