"""Views that render a Trace without recomputing it (the web viewer lives in web/)."""
