"""ModularRSI (seed 001): independent module branches, Worker-made integration, the sealed test once."""
