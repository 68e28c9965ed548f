print("hello from tool")
