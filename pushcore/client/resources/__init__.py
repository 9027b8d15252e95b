"""The API's resources, each as a sync and an async class over the same calls."""
