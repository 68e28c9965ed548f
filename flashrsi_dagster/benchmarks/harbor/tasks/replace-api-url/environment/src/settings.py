# Configuration (http://old-api.internal/v1 until March)
TIMEOUT = 30
