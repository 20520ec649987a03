"""The labs, one folder each (its compute modules, its tab.py, and its endpoints.py: the API endpoints it declares,
each a name, a compute function and a description), and core/, what the labs share. A lab never imports another."""
