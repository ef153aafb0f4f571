"""Who may reach the SGLang port (nftables sets), and the firewall's lint."""
