"""Console pages, one module per area. Views translate requests into selector and service
calls and render templates; they hold no scheduling logic."""
