package cli

// Version is tierfs's release: `tierfs --version` prints it, and python/setup.py reads it from this
// line for the Python package's version (tierfs.__version__), so it is written in one place.
const Version = "0.1.0"
