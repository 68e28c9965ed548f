print("release")
