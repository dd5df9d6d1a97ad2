"""Small fake servers for tests: real HTTP on 127.0.0.1, scripted answers, no network."""
