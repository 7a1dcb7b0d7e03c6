"""The domain model: plain values and enums shared by every package."""
