BASE_URL = "http://old-api.internal/v1"


def users_url():
    return BASE_URL + "/users"
