import TetherWire
