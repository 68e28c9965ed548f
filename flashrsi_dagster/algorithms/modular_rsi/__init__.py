"""ModularRSI (seed 001): independent module branches, a Worker-made integration, and the
sealed test once."""
