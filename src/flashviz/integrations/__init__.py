"""flashviz.attention inside other libraries: `flashviz.integrations.transformers.register()` (Hugging Face)."""
