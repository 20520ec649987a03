"""Repository tools, not part of the app: api_docs writes docs/api.md from the app's endpoints; pictures makes the
README's and docs' pictures from the running app; gpu_check measures the GPU path where a GPU is."""
