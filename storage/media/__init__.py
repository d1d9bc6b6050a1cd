"""Media: decoding uploaded images and making their thumbnails and avatars. Imports only db and model."""
