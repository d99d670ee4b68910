"""What a connection tells the apps above it. The catalog listens (it sits above connections: connections never
import it)."""

from django.dispatch import Signal

# Sent (with `asend`) once a user saved a new connection: `connection`, `user`. A receiver answers (words, ok);
# the catalog's fetches the provider's model list through the gate.
connection_added = Signal()

# The teams being deleted right now (teams.views.delete): a feature whose objects used one of their connections
# tells its users the team went with it, not only the connection.
deleting_teams: set[int] = set()
