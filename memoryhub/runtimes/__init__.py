"""The runtime layer: variable producers, runtimes and turn hooks, registered by the apps that own the data."""
