"""Model connections per role: endpoints, clients, usage."""
