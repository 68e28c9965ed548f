LEGACY = "http://old-api.internal/v1"
