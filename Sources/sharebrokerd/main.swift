import ShareBrokerAgent
print("x")
