"""specdec: faster generation for Hugging Face causal LMs with speculative decoding."""
