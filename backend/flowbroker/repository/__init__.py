"""The config repository: SQLAlchemy models of brokers, flows, deployments and users, and their migrations."""
