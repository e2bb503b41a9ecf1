"""The board people use in a browser: pages, exports, members' actions, login throttling."""
