"""The torch.compile executor: fusion regions compiled by Inductor without Dynamo, in this
process or a helper process, with their prims ordered for Inductor."""
