package plans
