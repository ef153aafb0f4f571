"""smg, the gateway: its worker API, its worker listing, and what its role refuses."""
