import os

TIMEOUT = 30

class Session:
    def open(self):
        pass

@decorator
def connect(host):
    return Session()
