ENDPOINTS = [
    "http://old-api.internal/v1/orders",
    "http://old-api.internal/v1/invoices",
]
FALLBACK = "http://old-api.internal/v10"  # a different service: keep
